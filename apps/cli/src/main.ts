/** The `engram` command line (issue 9): being written. */
process.stderr.write('engram: not yet implemented\n');
process.exitCode = 1;
