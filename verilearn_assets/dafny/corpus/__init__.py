"""Reading Dafny corpora: catalog entries, the loader, the program split, coverage rows."""
