#pragma once
// Only here for the module map. libsigc++ is a C++ library: peers_sigcpp.cpp includes
// <sigc++/sigc++.h> itself, so this header stays valid C (empty) and the module is never imported.
