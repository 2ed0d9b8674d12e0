/* ProcessPrng, for Wine 8 only (Debian 12's): Rust's standard library and getrandom
 * draw random bytes from bcryptprimitives.dll's ProcessPrng, which every Windows from
 * 10 on has and Wine has only from 9.x. This stand-in, built with MinGW-w64 and put in
 * the test prefix's system32 by tests/platforms/run.sh, fills the buffer from
 * RtlGenRandom (advapi32's SystemFunction036), as ProcessPrng does on Windows. It is
 * never shipped: a learner's Windows has the real one. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
