build2/obj/src/relay/localfs.o: src/relay/localfs.c src/relay/lfs_int.h \
 src/relay/localfs.h include/coffer.h src/policy/policy.h src/util/util.h
src/relay/lfs_int.h:
src/relay/localfs.h:
include/coffer.h:
src/policy/policy.h:
src/util/util.h:
