build2/obj/src/http/subjects.o: src/http/subjects.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
