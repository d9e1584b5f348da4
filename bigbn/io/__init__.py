"""Tables and networks in and out: CSV files and data frames, BIF networks."""
