build2/obj/src/cli/http.o: src/cli/http.c src/cli/cli.h src/util/util.h \
 include/coffer.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
