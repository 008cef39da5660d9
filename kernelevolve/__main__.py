from kernelevolve.cli import app

app()
