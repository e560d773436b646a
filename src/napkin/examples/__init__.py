"""The worked-example catalog (``napkin.examples.catalog``): each row computed through the
library beside its published value."""
