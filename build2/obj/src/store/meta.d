build2/obj/src/store/meta.o: src/store/meta.c src/store/meta.h \
 include/coffer.h src/util/util.h
src/store/meta.h:
include/coffer.h:
src/util/util.h:
