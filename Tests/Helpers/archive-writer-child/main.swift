import AppLifecycle
print("child")
