build2/obj/src/relay/lfs_search.o: src/relay/lfs_search.c \
 src/util/regex.h include/coffer.h src/relay/lfs_int.h \
 src/relay/localfs.h src/policy/policy.h src/util/util.h
src/util/regex.h:
include/coffer.h:
src/relay/lfs_int.h:
src/relay/localfs.h:
src/policy/policy.h:
src/util/util.h:
