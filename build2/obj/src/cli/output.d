build2/obj/src/cli/output.o: src/cli/output.c src/cli/cli.h \
 src/util/util.h include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
