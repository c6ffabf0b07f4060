print("Hello from the greeter")
