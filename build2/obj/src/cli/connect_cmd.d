build2/obj/src/cli/connect_cmd.o: src/cli/connect_cmd.c src/cli/cli.h \
 src/util/util.h include/coffer.h src/cli/connect.h src/relay/localfs.h \
 src/policy/policy.h src/util/sse.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
src/cli/connect.h:
src/relay/localfs.h:
src/policy/policy.h:
src/util/sse.h:
