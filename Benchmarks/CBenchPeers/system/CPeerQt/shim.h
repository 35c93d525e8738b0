#pragma once
// Only here for the module map. Qt is a C++ library: peers_qt.cpp includes <QtCore/QObject> itself,
// so this header stays valid C (empty) and the module is never imported.
