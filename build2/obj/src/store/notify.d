build2/obj/src/store/notify.o: src/store/notify.c src/store/notify.h \
 include/coffer.h src/util/util.h
src/store/notify.h:
include/coffer.h:
src/util/util.h:
