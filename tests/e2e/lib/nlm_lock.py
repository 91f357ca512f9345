#!/usr/bin/python3
# nlm_lock.py try PATH          take an exclusive fcntl lock on the whole of PATH without
#                               waiting and give it back: exit 0 if it was granted, 1 if
#                               another owner holds it (EAGAIN/EACCES), 2 for any other error
#                               (ENOLCK: no lock service, printed).
# nlm_lock.py hold PATH STOP    take it (exit 2 if it is not granted within 60 s: lockd's
#                               grace period), say "held" on stdout, hold it until the file
#                               STOP exists, then exit (the close releases it).
# nlm_lock.py test PATH         ask whether another owner holds a lock on PATH (F_GETLK: NLM
#                               TEST): exit 1 if one does (its pid printed), 0 if not, 2 for
#                               an error.
# nlm_lock.py wait PATH         take it waiting (F_SETLKW: NLM LOCK with block set), say
#                               "granted" once it is, give it back, exit 0 (2 for an error).
import errno, fcntl, os, struct, sys, time

def lock(fd):
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

op, path = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
if op == "try":
    try:
        lock(fd)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            print("busy")
            sys.exit(1)
        print("error: %s" % os.strerror(e.errno))
        sys.exit(2)
    print("granted")
    fcntl.lockf(fd, fcntl.LOCK_UN)
    sys.exit(0)
if op == "hold":
    stop = sys.argv[3]
    deadline = time.time() + 60
    while True:
        try:
            lock(fd)
            break
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES) or time.time() > deadline:
                print("error: %s" % os.strerror(e.errno), flush=True)
                sys.exit(2)
            time.sleep(1)
    print("held", flush=True)
    while not os.path.exists(stop):
        time.sleep(0.2)
    sys.exit(0)
if op == "wait":
    print("waiting", flush=True)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
    except OSError as e:
        print("error: %s" % os.strerror(e.errno), flush=True)
        sys.exit(2)
    print("granted", flush=True)
    fcntl.lockf(fd, fcntl.LOCK_UN)
    sys.exit(0)
if op == "test":
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (native layout).
    fl = struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        fl = fcntl.fcntl(fd, fcntl.F_GETLK, fl)
    except OSError as e:
        print("error: %s" % os.strerror(e.errno))
        sys.exit(2)
    l_type, _, _, _, l_pid = struct.unpack("@hhqqi4x", fl)
    if l_type == fcntl.F_UNLCK:
        print("free")
        sys.exit(0)
    print("held (pid %d)" % l_pid)
    sys.exit(1)
sys.exit("usage: nlm_lock.py try PATH | hold PATH STOP | wait PATH | test PATH")
