"""Automatic checks for the notebooks' exercises: each says what is wrong, not just False."""
