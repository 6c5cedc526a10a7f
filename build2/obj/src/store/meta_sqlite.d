build2/obj/src/store/meta_sqlite.o: src/store/meta_sqlite.c \
 src/store/meta_sqlite.h src/store/meta.h include/coffer.h \
 src/util/util.h
src/store/meta_sqlite.h:
src/store/meta.h:
include/coffer.h:
src/util/util.h:
