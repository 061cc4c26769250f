"""Create the asap2lab's Keystone objects in one process (each `openstack` CLI call costs ~3 s).

Idempotent (find or create). Reads everything from the environment:
  ASAP2LAB_KS_URL      e.g. http://198.18.0.1:5000
  ASAP2LAB_ADMIN_PW    password of the bootstrap user `admin`
  ASAP2LAB_SERVICE_PW  password of the service users glance, placement, nova, neutron
  ASAP2LAB_DEMO_PW     password of the tenant user `demo` (project `demo`, role `member`)
  ASAP2LAB_ENDPOINT_HOST  address the service endpoints advertise (198.18.0.1)
"""
import os
import sys

from keystoneauth1 import session
from keystoneauth1.identity import v3
from keystoneclient.v3 import client


def env(name):
    value = os.environ.get(name, '')
    if not value:
        sys.exit('keystone_setup: environment variable %s is empty' % name)
    return value


def find_or_create(manager, name, **kwargs):
    found = manager.list(name=name, **({'domain': kwargs['domain']} if 'domain' in kwargs else {}))
    if found:
        return found[0]
    return manager.create(name=name, **kwargs)


def main():
    ks, host = env('ASAP2LAB_KS_URL'), env('ASAP2LAB_ENDPOINT_HOST')
    admin_pw, svc_pw, demo_pw = env('ASAP2LAB_ADMIN_PW'), env('ASAP2LAB_SERVICE_PW'), env('ASAP2LAB_DEMO_PW')
    auth = v3.Password(auth_url=ks + '/v3', username='admin', password=admin_pw, project_name='admin',
                       user_domain_id='default', project_domain_id='default')
    kc = client.Client(session=session.Session(auth=auth))

    roles = {r.name: r for r in kc.roles.list()}
    for name in ('admin', 'member', 'reader', 'service'):
        if name not in roles:
            roles[name] = kc.roles.create(name)

    service_project = find_or_create(kc.projects, 'service', domain='default',
                                     description='asap2lab service users')
    for name in ('glance', 'placement', 'nova', 'neutron'):
        user = find_or_create(kc.users, name, domain='default', password=svc_pw)
        kc.users.update(user, password=svc_pw)
        kc.roles.grant(roles['admin'], user=user, project=service_project)
        kc.roles.grant(roles['service'], user=user, project=service_project)

    catalog = (('glance', 'image', 'http://%s:9292' % host),
               ('placement', 'placement', 'http://%s:8778' % host),
               ('nova', 'compute', 'http://%s:8774/v2.1' % host),
               ('neutron', 'network', 'http://%s:9696' % host))
    for name, kind, url in catalog:
        services = kc.services.list(name=name)
        service = services[0] if services else kc.services.create(name, type=kind)
        have = {e.interface for e in kc.endpoints.list(service=service, region='RegionOne')}
        for iface in ('public', 'internal', 'admin'):
            if iface not in have:
                kc.endpoints.create(service, url, interface=iface, region='RegionOne')

    demo_project = find_or_create(kc.projects, 'demo', domain='default', description='asap2lab tenant')
    demo = find_or_create(kc.users, 'demo', domain='default', password=demo_pw,
                          default_project=demo_project)
    kc.users.update(demo, password=demo_pw)
    kc.roles.grant(roles['member'], user=demo, project=demo_project)
    kc.roles.grant(roles['reader'], user=demo, project=demo_project)
    print('keystone_setup: service project, 4 service users, 4 services x 3 endpoints, '
          'project demo with user demo (member) ready')


if __name__ == '__main__':
    main()
