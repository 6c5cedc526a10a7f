build2/obj/src/http/volumes.o: src/http/volumes.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
