"""The ``napkin`` command line: parse → load specs → one library call → render."""
