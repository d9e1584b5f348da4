"""python -m bigbn.cli"""

from bigbn.cli.main import cli

cli()
