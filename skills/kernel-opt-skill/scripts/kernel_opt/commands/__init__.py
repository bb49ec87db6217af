"""One module per CLI: argument parsing, a call into the domain modules, output, exit code."""
