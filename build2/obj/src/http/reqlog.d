build2/obj/src/http/reqlog.o: src/http/reqlog.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
