/*
 * server.h — cofferd, the HTTP daemon, as a function the CLI can also call.
 */
#ifndef COF_SERVER_H
#define COF_SERVER_H

/*
 * Runs cofferd with its command-line flags (argv[0] is the program name):
 *   --data DIR            data directory (default ./data)
 *   --listen HOST:PORT    default 127.0.0.1:7700; port 0 picks a free port
 *   --gc-grace SECONDS    unreferenced content kept this long (default 24 h)
 *   --gc-interval SECONDS background gc period (default 3600; 0 = never)
 *   --relay-grace SECONDS a paused relay session ends after this (default 600)
 *   --relay-op-wait SECONDS a relayed op waits this long for its answer (120)
 *   --relay-sessions N    relay sessions in memory, every org (1000)
 *   --relay-sessions-per-org N  relay sessions not ended, per org (100)
 *   --max-conns N         connections at once (512)
 *   --max-conns-per-ip N  connections at once from one address (128)
 *   --head-timeout SECONDS a request head must be in this long after the
 *                         accept or the previous answer (30)
 *   --help, --version
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
