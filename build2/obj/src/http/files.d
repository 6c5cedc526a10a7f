build2/obj/src/http/files.o: src/http/files.c src/http/http.h \
 include/coffer.h src/util/util.h src/util/range.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
src/util/range.h:
