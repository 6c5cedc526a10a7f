build2/obj/src/cli/snapshot.o: src/cli/snapshot.c src/cli/cli.h \
 src/util/util.h include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
