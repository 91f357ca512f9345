#include "support/fakeclock.h"

uint64_t gwt_fake_now_us = 1000000;
struct event_base *gwt_fake_base;

uint64_t __wrap_gw_now_pass_us(void)
{
	return gwt_fake_now_us;
}

struct event_base *__wrap_gw_engine_base(const struct gw_engine *eng)
{
	(void)eng;
	return gwt_fake_base;
}

void gwt_fake_tick(struct event *timer, uint64_t us)
{
	gwt_fake_now_us += us;
	if (timer && event_pending(timer, EV_TIMEOUT, NULL)) {
		event_del(timer);
		event_active(timer, EV_TIMEOUT, 1);
		event_base_loop(gwt_fake_base, EVLOOP_NONBLOCK);
	}
}
