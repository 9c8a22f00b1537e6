from attnsvm.run import cli

cli()
