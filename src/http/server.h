/*
 * server.h — cofferd, the HTTP daemon, as a function the CLI can also call.
 */
#ifndef COF_SERVER_H
#define COF_SERVER_H

/*
 * Runs cofferd with its command-line flags (argv[0] is the program name).
 * The flags and their defaults are listed once, in usage() in server.c, which
 * `cofferd --help` prints (a copy here went stale; test_usage checks the
 * list against the parser).
 * Prints `cofferd listening on http://HOST:PORT` (flushed) once it accepts
 * connections, and the admin key when it was just created. Serves until
 * SIGTERM or SIGINT, then stops accepting, lets requests under way finish
 * (up to 30 s), stops the gc and closes the store. Returns the exit code:
 * 0 after a clean stop (and for --help/--version), 2 for a usage error,
 * 1 when the store cannot be opened or the address cannot be bound.
 * Blocks SIGTERM, SIGINT (and ignores SIGPIPE) in the calling process.
 */
int cofferd_main(int argc, char **argv);

#endif /* COF_SERVER_H */
