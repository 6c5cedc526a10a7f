build2/obj/src/http/console.o: src/http/console.c src/http/http.h \
 include/coffer.h src/util/util.h build2/gen/console_assets.inc
src/http/http.h:
include/coffer.h:
src/util/util.h:
build2/gen/console_assets.inc:
