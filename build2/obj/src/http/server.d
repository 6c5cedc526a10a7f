build2/obj/src/http/server.o: src/http/server.c src/http/http.h \
 include/coffer.h src/util/util.h src/http/server.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
src/http/server.h:
