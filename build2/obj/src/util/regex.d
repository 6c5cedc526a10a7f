build2/obj/src/util/regex.o: src/util/regex.c src/util/regex.h \
 include/coffer.h src/util/util.h
src/util/regex.h:
include/coffer.h:
src/util/util.h:
