build2/obj/src/cli/volume.o: src/cli/volume.c src/cli/cli.h \
 src/util/util.h include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
