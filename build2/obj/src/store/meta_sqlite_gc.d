build2/obj/src/store/meta_sqlite_gc.o: src/store/meta_sqlite_gc.c \
 src/store/meta_sqlite.h src/store/meta.h include/coffer.h \
 src/util/util.h
src/store/meta_sqlite.h:
src/store/meta.h:
include/coffer.h:
src/util/util.h:
