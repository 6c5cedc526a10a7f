build2/obj/src/cli/files.o: src/cli/files.c src/cli/cli.h src/util/util.h \
 include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
