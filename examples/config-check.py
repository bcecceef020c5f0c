# "Is this configuration valid?" — a chat agent checks a deployment config against the team's rules.
import json

config = json.loads('{"replicas": 3, "memory_mb": 512, "region": "eu-west-1", "public": true}')

problems = []
if not 2 <= config["replicas"] <= 10:
    problems.append("replicas must be between 2 and 10")
if config["memory_mb"] % 256 != 0:
    problems.append("memory_mb must be a multiple of 256")
if config["public"] and config["region"].startswith("eu-"):
    problems.append("public services in the EU need a privacy review")

{"valid": len(problems) == 0, "problems": problems}
