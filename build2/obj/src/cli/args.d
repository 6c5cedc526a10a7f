build2/obj/src/cli/args.o: src/cli/args.c src/cli/cli.h src/util/util.h \
 include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
