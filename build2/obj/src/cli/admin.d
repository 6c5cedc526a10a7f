build2/obj/src/cli/admin.o: src/cli/admin.c src/cli/cli.h src/util/util.h \
 include/coffer.h src/http/server.h
src/cli/cli.h:
src/util/util.h:
include/coffer.h:
src/http/server.h:
