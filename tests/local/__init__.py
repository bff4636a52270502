"""Tests of eog_core.local, the embedded reference gym."""
