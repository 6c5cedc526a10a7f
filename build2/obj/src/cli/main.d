build2/obj/src/cli/main.o: src/cli/main.c src/cli/cli.h src/util/util.h \
 include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
