"""The work directory: zarr tables, the journal, the run record and finished runs."""
