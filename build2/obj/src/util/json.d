build2/obj/src/util/json.o: src/util/json.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
