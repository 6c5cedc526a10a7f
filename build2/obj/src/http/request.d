build2/obj/src/http/request.o: src/http/request.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
