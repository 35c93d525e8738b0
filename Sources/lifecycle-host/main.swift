print("lifecycle-host: demo not built yet")
