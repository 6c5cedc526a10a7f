build2/obj/src/http/router.o: src/http/router.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
