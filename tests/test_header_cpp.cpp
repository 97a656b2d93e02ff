// test_header_cpp.cpp - the public header compiles alone as C++.
#include "ringfeed.h"

int main()
{
	rf_config cfg;
	rf_config_default(&cfg);
	return rf_version_number() == RF_VERSION_NUMBER && cfg.batch_size == 64 ? 0 : 1;
}
