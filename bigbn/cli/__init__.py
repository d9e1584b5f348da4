"""The command line: `bigbn run`, `plan`, `status`, `sample`, `effects` and the tools."""
