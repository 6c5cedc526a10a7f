build2/obj/src/http/snapshots.o: src/http/snapshots.c src/http/http.h \
 include/coffer.h src/util/util.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
