build2/obj/src/store/meta_sqlite_list.o: src/store/meta_sqlite_list.c \
 src/store/meta_sqlite.h src/store/meta.h include/coffer.h \
 src/util/util.h
src/store/meta_sqlite.h:
src/store/meta.h:
include/coffer.h:
src/util/util.h:
