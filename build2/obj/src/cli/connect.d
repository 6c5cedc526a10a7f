build2/obj/src/cli/connect.o: src/cli/connect.c src/cli/cli.h \
 src/util/util.h include/coffer.h src/cli/connect.h src/relay/localfs.h \
 src/policy/policy.h src/util/sse.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
src/cli/connect.h:
src/relay/localfs.h:
src/policy/policy.h:
src/util/sse.h:
