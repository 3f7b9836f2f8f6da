"""The deploy gate (`make check-deploy`): proves from synthesized templates, with no AWS account, that a
`cdk deploy` of this stack would work. Its checks read each template as data (infra/gate/checks.py)."""
