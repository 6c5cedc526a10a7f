/*
 * cofferd.c — the daemon's entry point; everything else is in src/http.
 */
#include "http/server.h"

int main(int argc, char **argv)
{
	return cofferd_main(argc, argv);
}
