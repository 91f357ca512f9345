/*
 * A fake clock and loop for a unit test that drives timers by hand: the
 * gateway's pass clock (gw_now_pass_us()) reads gwt_fake_now_us, and an
 * engine's loop (gw_engine_base()) is gwt_fake_base. A test that uses them
 * names both symbols in its test_NAME.wrap file, so that the calls from
 * gwcore come here (-Wl,--wrap).
 */
#ifndef GW_TESTS_SUPPORT_FAKECLOCK_H
#define GW_TESTS_SUPPORT_FAKECLOCK_H

#include <stdint.h>

#include <event2/event.h>

struct gw_engine;

/* The time gw_now_pass_us() gives, in microseconds: the test moves it on. */
extern uint64_t gwt_fake_now_us;
/* The loop every engine's timers are made on: the test makes and frees it. */
extern struct event_base *gwt_fake_base;

uint64_t __wrap_gw_now_pass_us(void);
struct event_base *__wrap_gw_engine_base(const struct gw_engine *eng);

/*
 * The clock moves on by @us; @timer (NULL: none), if pending, fires now, in
 * one turn of gwt_fake_base that does not block: what its timeout would
 * have done once that much time passed.
 */
void gwt_fake_tick(struct event *timer, uint64_t us);

#endif
